// The function app's user-assigned managed identity. One identity does everything the app needs:
//   - host storage (AzureWebJobsStorage__credential = managedidentity, timer singleton leases, function keys)
//   - the deployment package container (functionAppConfig.deployment.storage.authentication)
//   - Azure SQL (a contained database user created by infra/sql/grant-app-identity.sql, data roles only)
//   - Key Vault references (keyVaultReferenceIdentity) and Application Insights ingestion
// A user-assigned identity (not system-assigned) exists before the app does, so its client id can be put in
// the app settings (AZURE_CLIENT_ID, AzureWebJobsStorage__clientId) and its roles granted in the same deployment.

@description('Name of the user-assigned managed identity.')
param name string

@description('Azure region.')
param location string

@description('Tags for the resource.')
param tags object = {}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

@description('Resource id (for identity assignments and deployment storage authentication).')
output id string = identity.id

@description('Name; also the name of the contained database user.')
output name string = identity.name

@description('Client (application) id: AZURE_CLIENT_ID, and the SID of the contained database user.')
output clientId string = identity.properties.clientId

@description('Object (principal) id: the principal of the role assignments.')
output principalId string = identity.properties.principalId
