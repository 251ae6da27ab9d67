// Flex Consumption plan + function app (Linux, Node 22) and every app setting.
//
// Flex Consumption moves runtime, scale and deployment into properties.functionAppConfig and rejects the old
// settings that did the same job: never add FUNCTIONS_WORKER_RUNTIME, FUNCTIONS_EXTENSION_VERSION,
// WEBSITE_NODE_DEFAULT_VERSION, WEBSITE_RUN_FROM_PACKAGE, WEBSITE_CONTENTSHARE,
// WEBSITE_CONTENTAZUREFILECONNECTIONSTRING, FUNCTIONS_WORKER_PROCESS_COUNT or
// WEBSITE_MAX_DYNAMIC_APPLICATION_SCALE_OUT here (test/unit/infra.settings-drift.test.ts fails if one appears).
//
// App settings are written as ONE 'appsettings' config resource, which replaces the whole set on every
// deployment: a setting changed by hand in the portal is reset by the next deployment. Put extra settings in
// the additionalAppSettings parameter instead.

@description('Flex Consumption plan name.')
param planName string

@description('Function app name (globally unique; the host name is <name>.azurewebsites.net).')
param appName string

@description('Azure region (must offer Flex Consumption).')
param location string

@description('Tags for the resources.')
param tags object = {}

@description('Resource id of the user-assigned identity.')
param identityId string

@description('Client id of the user-assigned identity.')
param identityClientId string

@description('Host storage account name.')
param storageAccountName string

@description('URL of the deployment package container.')
param deploymentContainerUrl string

@description('Application Insights connection string.')
param appInsightsConnectionString string

@description('Instance memory in MB (CPU is proportional: 512 = 0.25 core, 2048 = 1 core, 4096 = 2 cores).')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Scale-out limit, per function group: the HTTP functions scale out to it together, and each timer runs as one singleton whatever the count. Flex Consumption refuses values below 40 in most regions, so 40 is the floor here. Size it with SQL_POOL_MAX against the database limits.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('Concurrent HTTP invocations per instance; 0 = the platform default for the memory size. Long-poll GET /api/responses waiters hold a slot each while they wait, so many waiters need a higher value.')
@minValue(0)
@maxValue(1000)
param httpPerInstanceConcurrency int = 0

@description('SQL server host name (SQL_SERVER).')
param sqlServerFqdn string

@description('Database name (SQL_DATABASE).')
param sqlDatabaseName string

@description('Storage queue of the drain requests (DRAIN_REQUEST_QUEUE), created by modules/storage.bicep.')
param drainRequestQueue string

@description('Comma-separated worker queues (QUEUES).')
param queues string = 'worker'

@description('Comma-separated host names that recovery callbacks may target (CALLBACK_ALLOWED_HOSTS); empty = none.')
param callbackAllowedHosts string = ''

@description('Versionless Key Vault secret URI of the callback signing secret.')
param callbackSigningSecretUri string

@description('When set, the worker handler POSTs each job here (WORKER_FORWARD_URL); empty = the echo sample.')
param workerForwardUrl string = ''

@description('More app settings (name: string value), e.g. { DRAIN_BUDGET_SECONDS: \'6\' }. The settings below win on a name clash.')
param additionalAppSettings object = {}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true // Linux
  }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: appName
  location: location
  tags: tags
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    // Key Vault references in the app settings are resolved with this identity (the default is the
    // system-assigned identity, which this app does not have).
    keyVaultReferenceIdentity: identityId
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: deploymentContainerUrl
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
        triggers: httpPerInstanceConcurrency > 0 ? {
          http: {
            perInstanceConcurrency: httpPerInstanceConcurrency
          }
        } : null
      }
      runtime: {
        name: 'node'
        version: '22'
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Settings the app reads. Every name here must be in SETTINGS (shared/settings/catalog.ts); the unit test
// test/unit/infra.settings-drift.test.ts parses this object and fails on a name the app does not know.
// ---------------------------------------------------------------------------------------------------------
var appSettings = {
  // Azure SQL with Entra: no password anywhere, the app authenticates as AZURE_CLIENT_ID.
  SQL_SERVER: sqlServerFqdn
  SQL_DATABASE: sqlDatabaseName
  AZURE_CLIENT_ID: identityClientId
  // The deployer creates the schema (npm run schema -- apply); the app only verifies it, so its identity
  // needs data rights only (db_datareader + db_datawriter).
  AUTO_CREATE_SCHEMA: 'false'
  QUEUES: queues
  // Work-driven drains: publishes send drain requests on the storage queue, the timers are a 5-minute safety net.
  DRAIN_TRIGGER: 'queue'
  DRAIN_REQUEST_QUEUE: drainRequestQueue
  WORKER_FORWARD_URL: workerForwardUrl
  CALLBACK_ALLOWED_HOSTS: callbackAllowedHosts
  // Resolved by the platform from Key Vault; the app sees the secret value.
  CALLBACK_SIGNING_SECRET: '@Microsoft.KeyVault(SecretUri=${callbackSigningSecretUri})'
}

// ---------------------------------------------------------------------------------------------------------
// Platform settings, read by the Functions host and the Application Insights integration, not by our config.
// ---------------------------------------------------------------------------------------------------------
var platformSettings = {
  // Identity-based host storage (no connection string): account + the user-assigned identity.
  AzureWebJobsStorage__accountName: storageAccountName
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
  // Entra-authenticated ingestion for the host's telemetry (see modules/monitoring.bicep).
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=AAD;ClientId=${identityClientId}'
}

resource settings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  // Later objects win: the fixed settings above cannot be overridden by additionalAppSettings.
  properties: union(additionalAppSettings, platformSettings, appSettings)
}

@description('Function app name.')
output name string = site.name

@description('Default host name (<name>.azurewebsites.net).')
output defaultHostName string = site.properties.defaultHostName
